"""Reading and validating inputs, the canonical layout, the demo data generators."""
