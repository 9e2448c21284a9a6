"""ETC's (Elastic Transmission Control's) machinery, no CCA: the linear enclosure of its
elastic update, Eq. 1 (:mod:`ccac.ccas.elastic.enclosure`), and the independent check of its
traces (:mod:`ccac.ccas.elastic.check`). The CCA itself is :mod:`ccac.ccas.etc`.
"""
