"""The PCC family's machinery (Allegro, Vivace, Proteus), no CCA: the shared scale, pacing and
non-linear enclosures (:mod:`ccac.ccas.pcc.shared`), the per-packet RTT samples and what they
make of an MI's gradient and deviation (:mod:`ccac.ccas.pcc.rtt`), and Vivace's rate
controller, which Proteus shares: its encoding (:mod:`ccac.ccas.pcc.gradient`) and its
independent check (:mod:`ccac.ccas.pcc.gradient_check`). The CCAs themselves are modules of
:mod:`ccac.ccas` (``allegro``, ``vivace``, ``proteus_p``, ``proteus_s``, ``proteus_h``).
"""
