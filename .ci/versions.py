"""Print the versions a CI run installed (and the BLAS numpy runs on), so that a failure can
be traced to a version. Never fails: whatever is missing or breaks is printed as such."""

import importlib.metadata as metadata
import platform

#: (label, distribution names to try)
PACKAGES = [("numpy", ["numpy"]), ("scipy", ["scipy"]), ("numba", ["numba"]),
            ("llvmlite", ["llvmlite"]), ("pyarrow", ["pyarrow"]),
            ("scikit-learn", ["scikit-learn"]), ("dask", ["dask"]),
            ("PySide6", ["PySide6-Essentials", "PySide6"]), ("pytest", ["pytest"]),
            ("pytest-xdist", ["pytest-xdist"]), ("onnx", ["onnx"]), ("onnxruntime", ["onnxruntime"]), ("pandas", ["pandas"])]


def version(names):
    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return "not installed"


def blas_lines():
    """The BLAS/LAPACK numpy was built against, and those loaded at run time by numpy and scipy
    (threadpoolctl)."""
    try:
        import numpy as np
    except Exception as exc:                                  # noqa: BLE001 - report, go on
        return [f"numpy BLAS: not available ({type(exc).__name__})"]
    out = []
    try:
        deps = np.show_config(mode="dicts")["Build Dependencies"]
        for part in ("blas", "lapack"):
            info = deps.get(part, {})
            out.append(f"numpy {part} (build): {info.get('name', '?')} "
                       f"{info.get('version', '?')}")
    except Exception as exc:                                  # noqa: BLE001 - numpy < 1.26
        out.append(f"numpy BLAS (build): unknown ({type(exc).__name__})")
    try:
        import scipy.linalg  # noqa: F401 - loads scipy's own BLAS, if it has one
    except Exception:                                         # noqa: BLE001 - numpy's is enough
        pass
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return out + ["BLAS at run time: threadpoolctl not installed"]
    try:
        for pool in threadpool_info():
            if pool.get("user_api") == "blas":
                out.append(f"BLAS at run time: {pool.get('internal_api')} "
                           f"{pool.get('version')} ({pool.get('architecture')}, "
                           f"{pool.get('num_threads')} threads) {pool.get('filepath')}")
    except Exception as exc:                                  # noqa: BLE001 - report, go on
        out.append(f"BLAS at run time: unknown ({type(exc).__name__})")
    return out


def main():
    print(f"python {platform.python_version()} on {platform.platform()} "
          f"({platform.machine()})")
    for label, names in PACKAGES:
        print(f"{label} {version(names)}")
    for line in blas_lines():
        print(line)


if __name__ == "__main__":
    main()
