"""The articles' own tables beside ours: each numeric item of the five articles keeps its
rows and columns, the article's number next to the median of the notebook's sweep and its
spread (the columns marked SWEEP), the relative column the article uses (% over the first
row, or a ratio), and the claim that judges the row with its verdict on the value, interval
and processes that verdict stands on (VERDICT_COLUMN), and what its x is (QUANTITY_COLUMN).
Built from the data CSVs the notebooks write (results.data_dir), never by measuring here.

    from labkit.lab.report import articles
    t = articles.table("t01")        # one ArticleTable: .frame (for display), .points (figure)
    articles.figure(t)               # the article's points over the measured ones
    articles.article_verdicts("01_stack_size")   # the row claims judged from that notebook

Absolute ns come from another machine (a 5 GHz desktop, a Kunpeng VM): only the relative
columns are compared, and every verdict is the rule of data/claims.csv, written first.
"""
from labkit.lab.report.articles.anatomy import (count_memory_ops, jump_fcontext_memory_ops,
                                                save_anatomy)
from labkit.lab.report.articles.measured import STACKS, STRATEGIES, measured_machines
from labkit.lab.report.articles.rows import (ROW_JUDGES, article_verdicts, judged_on,
                                             save_article_verdicts, verdict_of)
from labkit.lab.report.articles.show import figure, section, to_html
from labkit.lab.report.articles.tables import (QUANTITY_COLUMN, SWEEP, TABLES, by_notebook,
                                               VERDICT_COLUMN, ArticleTable, closing_note, table,
                                               tables)

__all__ = [
    # the tables
    "ArticleTable", "table", "tables", "TABLES", "by_notebook", "closing_note",
    "VERDICT_COLUMN", "QUANTITY_COLUMN", "SWEEP",
    # showing them
    "figure", "to_html", "section",
    # the row claims
    "ROW_JUDGES", "article_verdicts", "save_article_verdicts", "verdict_of", "judged_on",
    # jump_fcontext counted
    "count_memory_ops", "jump_fcontext_memory_ops", "save_anatomy",
    # what stands for the articles' rows, and the machine that measured them
    "STACKS", "STRATEGIES", "measured_machines",
]
