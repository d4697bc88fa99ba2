"""Layer 6: the host library (the C ABI shim over the ports, ``shim``) and its Python caller
(``ffi``). Imports core, model and cpu."""
