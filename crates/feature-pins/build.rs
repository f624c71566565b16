//! Empty: it makes the build-dependencies part of the build, so that their features count.

fn main() {}
