"""Layer 1, the ground: verdicts, operator sources, the toolchain, configuration, provenance, the
strict YAML loader, LLM agents, the run lock, float and statistics helpers, and the import closure
that gives each rule its code inputs. Imports nothing else of tileport."""
