"""Synthesis: from a template (a CCA file with holes, :mod:`ccac.encode.templates`) and a goal
(queries whose ``find`` the CCA must never meet), a CCA of the template that meets the goal on
every trace, or the claim that none does, by counterexample-guided search
(:mod:`~ccac.synthesis.cegis`; the synthesis file, :mod:`~ccac.synthesis.spec`), with each
candidate played on a counterexample's path in the model's fluid terms
(:mod:`~ccac.synthesis.fluid_player`).

May import: every room below it (:mod:`ccac.core` to :mod:`ccac.analysis`).
"""
