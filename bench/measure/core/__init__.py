"""The timing core: the three timing modes, host and GPU state, kernel signatures, the GPU context a
probe builds on, the waterfall, and the runner that builds, checks and times a probe's variants in
one process."""
