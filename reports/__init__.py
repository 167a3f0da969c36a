if __name__ != "cudnn_hostbench.reports":   # one import name per file: docs/layout.md
    raise ImportError(f"{__name__}: import this folder as cudnn_hostbench.reports "
                      "(under a second name its modules would load twice)")
