"""Layer 9: the routing loop -- what each stage's verdict sends where, within the attempt caps.
Imports the layers below."""
