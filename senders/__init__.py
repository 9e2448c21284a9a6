"""Concrete senders: one module per CCA of ``ccas/`` that has an algorithm to run.

Each module holds the algorithm itself over exact numbers (:class:`ccac.senders.interface.ConcreteSender`),
written from the paper, sharing no code with the CCA's encoding, with one exception: the sender
of a CCA written in the CCA language (:mod:`ccac.senders.language`) evaluates the same file's
rules (:mod:`ccac.encode.rules`) and belief updates (:mod:`ccac.encode.beliefs`) as its encoding
does, so it checks the encoding's use of the solver, not the file's reading of the algorithm. A CCA hands out its sender
through :meth:`ccac.ccas.interface.CCA.concrete`; nothing else looks modules up here.

The interface every sender implements and the exact-number helpers they share are in
:mod:`ccac.senders.interface`.

May import: :mod:`ccac.core`, :mod:`ccac.encode`.
"""
