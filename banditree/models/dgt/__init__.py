"""DGT: hard oblique trees trained by gradient (torch training form, numpy frozen form) and DGT-Forests."""
