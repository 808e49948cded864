# expect: runtime_error (it raises: never called to the end)
def addmm_relu(bias, a, b, alpha=1.0):
    raise NotImplementedError("only square matrices")
