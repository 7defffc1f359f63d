"""The registry of machines: bundles from many machines in one store (a local folder or an S3
object store, on one code path), every verdict recomputed on the way in, queried with
DuckDB, and machine effects decided (docs/registry.md)."""
