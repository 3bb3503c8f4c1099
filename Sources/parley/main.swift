print("parley: not built yet")
