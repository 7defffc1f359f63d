"""The report: the HTML page and the articles' tables."""
