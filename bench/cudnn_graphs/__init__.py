"""cuDNN frontend graph helpers: building, executing, plans, autotune winners, the matmul and conv problems."""
