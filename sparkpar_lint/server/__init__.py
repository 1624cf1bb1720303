"""`sparkpar server`: findings in the editor over the Language Server Protocol (needs `sparkpar[lsp]`)."""
