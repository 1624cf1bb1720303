"""Fix builders the rules call: each turns a finding's stages into a `Fix`, or says why not."""
