"""Text and syntax-tree edits the rules build their fixes from: the `Fix` itself, code in the
module's own import dialect, method-chain rewrites, import lists, layout and quoting."""
