"""The foundation every other room stands on: the one error type of bad input
(:mod:`~ccac.core.errors`), time and size limits with progress (:mod:`~ccac.core.limits`), and
declared, exactly parsed parameters (:mod:`~ccac.core.params`).

May import: nothing of ccac outside this room.
"""

VERSION = "0.1.0"
