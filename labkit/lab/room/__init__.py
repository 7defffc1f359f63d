"""The room: a workshop's shared room, one comparison across many machines on Dask
distributed with mutual TLS (docs/architecture.md names its parts). Its packages are the
`room` extra; its command line is labkit/lab/cli/room.py."""
