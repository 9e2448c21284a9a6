"""``proteus-h``: PCC Proteus-H (SIGCOMM 2020). The model, its readings and abstractions are in
``ccas/proteus.py`` (shared by the three modes) and ``ccas/pcc/shared.py`` (the PCC machinery)."""

from ccac.ccas.proteus import Proteus

ALGORITHM = Proteus("H")
