"""`labkit compare` and `labkit export`: sides compared with the verdict engine (live, or
from saved verdict runs), and results written in the formats other tools read."""
