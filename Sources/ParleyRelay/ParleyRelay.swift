// ParleyRelay: see README.md
