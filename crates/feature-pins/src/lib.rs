//! Nothing: the dependencies in this crate's manifest are what it is for (see its comment).
