// ParleyWire: see README.md
