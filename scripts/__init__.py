if __name__ != "cudnn_hostbench.scripts":   # one import name per file: docs/layout.md
    raise ImportError(f"{__name__}: import this folder as cudnn_hostbench.scripts "
                      "(under a second name its modules would load twice)")
