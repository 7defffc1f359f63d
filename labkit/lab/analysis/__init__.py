"""Each notebook's analysis: the frames, tables and figures it shows."""
