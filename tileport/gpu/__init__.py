"""Layer 8: the GPU stages -- the harness, the functional test, the CUPTI benchmark, the host-time
and loop studies, the performance diagnosis, and ``kept``: the one owner of whether a kept GPU
measurement still holds. Imports the layers below; torch and CUPTI are imported lazily so that
CPU jobs never load them."""
