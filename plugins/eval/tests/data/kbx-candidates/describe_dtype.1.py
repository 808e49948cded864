# expect: checker_rejected (no function describe_dtype: L1's entry-function-missing)
def describe(input):
    return "other"
