"""``collimate demo | burst | rl | launch | fleet | top``: live views of a
backend from a terminal.

Each view drives (or watches) the embedded local backend, a daemon or the
gateway, named by the same flags ``connect()`` takes (:mod:`.target`),
draws a live Rich frame on a terminal or plain lines elsewhere
(:mod:`.screen`), and ends with a summary whose figures come from the
samples it took (and, where the server exposes them, its own counters).
Every sandbox a view creates is deleted before it exits, Ctrl-C included.
"""
