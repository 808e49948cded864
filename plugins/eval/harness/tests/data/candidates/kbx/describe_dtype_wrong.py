def describe_dtype(input):
    return "float"
