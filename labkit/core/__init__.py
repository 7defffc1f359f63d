"""The measurement core: the one binding layer over the C (the Cython extension `_core` and
the ctypes side `native`, with the structs of `structs`), the worker processes every timed
run happens in, the machine's metadata, the catalogue of kernels and peers, the timed
ping-pongs, rings and hand-offs, the correctness checks, and the summaries and figures.
Imports nothing from labkit.experiments or labkit.lab (docs/architecture.md)."""
