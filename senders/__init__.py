"""Concrete senders: one module per CCA of ``ccas/`` that has an algorithm to run.

Each module holds the algorithm itself over exact numbers (:class:`ccac.sender.ConcreteSender`),
written from the paper, sharing no code with the CCA's encoding. A CCA hands out its sender
through :meth:`ccac.cca.CCA.concrete`; nothing else looks modules up here.
"""
