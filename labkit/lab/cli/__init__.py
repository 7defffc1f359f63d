"""The `labkit` command (also `python -m labkit`): one module per command group, each adding
its own options and running itself (running, measuring, sharing, registry, advising,
jupyter, room), each command a Command (command.py); main.py holds the table of commands,
builds the parser from it and turns errors into exit statuses.

    labkit reproduce [--quick] [--only NB ...] [-f params.yaml] [-p NAME VALUE] [--resume] [--json]
    labkit measure asm_fpu [--build O0] [--fp-control differ] [--json | --csv]
    labkit catalogue [--json | --csv]   (or: labkit kernels)
    labkit check [--json]              labkit stability --runs 3 [--quick]
    labkit bundle -o mylaptop          labkit merge a.labkit b.labkit [--json]
    labkit report                      labkit lab          labkit room ...
    labkit publish a.labkit --registry PATH_OR_URL
    labkit registry claims|ladder|machines|effects --registry PATH_OR_URL [--json]
    labkit registry serve [--data DIR] [--address HOST:PORT]
    labkit registry gallery --registry PATH_OR_URL -o DIR
    labkit registry compact --registry PATH_OR_URL

Exit status: 0 ok; 1 a measurement or a notebook failed (one line; --debug shows the
traceback); 2 a usage error (a bad option or value); 130 interrupted; 141 the output's
reader went away (a pipe into head).
"""
from labkit.lab.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
