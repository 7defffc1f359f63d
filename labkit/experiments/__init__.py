"""The experiments: what one notebook or article needs beyond the core (instructions per
switch, coroutine frames and memory, work between switches, echo servers, interleaved
measurement over fresh workers, what an idle process costs a measurement beside it).
Each owns the worker_* functions of its measurements. Imports from labkit.core, never
from labkit.lab."""
