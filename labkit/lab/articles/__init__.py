"""The articles' own tables beside ours: each numeric item of the five articles keeps its
rows and columns, the article's number next to the measured median and its spread, the
relative column the article uses (% over the first row, or a ratio), and the claim id and
verdict that judge the row. Built from the data CSVs the notebooks write (results.data_dir),
never by measuring here.

    from labkit.lab import articles
    t = articles.table("t01")        # one ArticleTable: .frame (for display), .points (figure)
    articles.figure(t)               # the article's points over the measured ones
    articles.article_verdicts("01_stack_size")   # the row claims judged from that notebook

Absolute ns come from another machine (a 5 GHz desktop, a Kunpeng VM): only the relative
columns are compared, and every verdict is the rule of data/claims.csv, written first.
"""
from labkit.lab.articles.anatomy import count_memory_ops, jump_fcontext_memory_ops, save_anatomy
from labkit.lab.articles.measured import STACKS, STRATEGIES
from labkit.lab.articles.rows import ROW_JUDGES, article_verdicts, save_article_verdicts, verdict_of
from labkit.lab.articles.show import figure, section, to_html
from labkit.lab.articles.tables import BY_NOTEBOOK, TABLES, ArticleTable, closing_note, table, tables

__all__ = [
    # the tables
    "ArticleTable", "table", "tables", "TABLES", "BY_NOTEBOOK", "closing_note",
    # showing them
    "figure", "to_html", "section",
    # the row claims
    "ROW_JUDGES", "article_verdicts", "save_article_verdicts", "verdict_of",
    # jump_fcontext counted
    "count_memory_ops", "jump_fcontext_memory_ops", "save_anatomy",
    # what stands for the articles' rows
    "STACKS", "STRATEGIES",
]
