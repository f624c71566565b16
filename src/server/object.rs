//! A `T` read from a JSON object only, for every protocol's wire types: serde's derive reads a
//! struct from an array too, by position, and no protocol served here sends its objects so.

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor, value::MapAccessDeserializer};
use std::fmt;
use std::marker::PhantomData;

/// A `T` read from a JSON object only. serde reads a struct from an array too, by position
/// (`["Calculator.Add@1.0.0", null, null, {"a": 1}]` would be a call): every object of the
/// wire format goes through this instead.
#[derive(Debug)]
pub(crate) struct Object<T>(pub(crate) T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Only<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Only<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map))
            }
        }
        deserializer.deserialize_map(Only(PhantomData)).map(Object)
    }
}

/// `body`, when it is a JSON object that reads as `T`.
pub(crate) fn object<'de, T: Deserialize<'de>>(body: &'de [u8]) -> Option<T> {
    serde_json::from_slice::<Object<T>>(body)
        .ok()
        .map(|Object(t)| t)
}

/// An optional object field (`null` or absent is `None`).
pub(crate) fn optional_object<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<T>, D::Error> {
    Ok(Option::<Object<T>>::deserialize(deserializer)?.map(|o| o.0))
}

/// An array of objects.
pub(crate) fn objects<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Vec<T>, D::Error> {
    Ok(Vec::<Object<T>>::deserialize(deserializer)?
        .into_iter()
        .map(|o| o.0)
        .collect())
}
