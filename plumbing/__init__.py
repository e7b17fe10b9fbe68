"""Operating-system plumbing shared by every layer: the one git runner (``git``), safe reads of
untrusted files and the one atomic write (``files``), the one process-group stopper
(``process``). It imports no other package of Ratchet's."""
