// ParleyTUI: see README.md
