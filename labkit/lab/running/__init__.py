"""Running: reproduce, executing notebooks, their parameters, sweeps and the status line."""
