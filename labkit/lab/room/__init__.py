"""The room: a workshop's shared room, one comparison across many machines on Dask
distributed with mutual TLS. room (serve, join, run), tls (the room's keys), suite (what a
room's task runs on each machine), view (a room's run, live in a notebook), page (the
room's bundles in a registry and its offline page), noise (what an idle joined worker
costs a measurement). Its dependencies are the `room` extra; its command line is
labkit/lab/cli/room.py."""
