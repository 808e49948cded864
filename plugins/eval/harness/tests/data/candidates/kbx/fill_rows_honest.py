import torch


def fill_rows_(input, rows, value):
    for row in rows.tolist():
        input[row].fill_(value)
    return input
