//! The parameter model the Google discovery documents and the X OpenAPI documents share, and
//! the one check of a query string against it. Each spec module fills these tables from its
//! own file; the handlers turn a [`ParamError`] into their platform's error body.

use std::collections::BTreeMap;

/// A parameter's JSON type, as the spec declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    String,
    Integer,
    Number,
    Boolean,
}

impl Kind {
    /// Parses a spec's `type` (`string`, `integer`, `number`, `boolean`; anything else is
    /// taken as a string, which is how it travels in a query).
    pub fn from_spec(name: Option<&str>) -> Self {
        match name {
            Some("integer") => Self::Integer,
            Some("number") => Self::Number,
            Some("boolean") => Self::Boolean,
            _ => Self::String,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Integer => "integer",
            Self::Number => "number",
            Self::Boolean => "boolean",
        }
    }

    fn accepts(self, value: &str) -> bool {
        match self {
            Self::String => true,
            Self::Integer => value.parse::<i64>().is_ok(),
            Self::Number => value.parse::<f64>().is_ok_and(f64::is_finite),
            Self::Boolean => matches!(value, "true" | "false"),
        }
    }
}

/// One query parameter of a method.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// The type of the value, or of each item of a list.
    pub kind: Kind,
    /// Allowed values (of each item of a list); empty: any value of `kind`.
    pub enum_values: Vec<String>,
    pub required: bool,
    /// Google `repeated`: the parameter may appear more than once.
    pub repeated: bool,
    /// X `type: array` with `explode: false`: one comma-separated value, checked item by item.
    pub list: bool,
    /// Bounds of a number (`minimum`/`maximum`).
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    /// Bounds of a list's length (`minItems`/`maxItems`).
    pub min_items: Option<usize>,
    pub max_items: Option<usize>,
}

impl Param {
    pub fn new(kind: Kind) -> Self {
        Self {
            kind,
            enum_values: Vec::new(),
            required: false,
            repeated: false,
            list: false,
            minimum: None,
            maximum: None,
            min_items: None,
            max_items: None,
        }
    }

    /// Widens this parameter by `other` (the same parameter in another version of the spec):
    /// the union of both enums, required only if both require it, the wider bounds.
    pub fn merge(&mut self, other: &Param) {
        if self.enum_values.is_empty() || other.enum_values.is_empty() {
            self.enum_values.clear();
        } else {
            for value in &other.enum_values {
                if !self.enum_values.contains(value) {
                    self.enum_values.push(value.clone());
                }
            }
        }
        self.required &= other.required;
        self.repeated |= other.repeated;
        self.list |= other.list;
        self.minimum = wider(self.minimum, other.minimum, f64::min);
        self.maximum = wider(self.maximum, other.maximum, f64::max);
        self.min_items = wider(self.min_items, other.min_items, usize::min);
        self.max_items = wider(self.max_items, other.max_items, usize::max);
    }
}

fn wider<T>(a: Option<T>, b: Option<T>, pick: fn(T, T) -> T) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(pick(a, b)),
        // A bound only one version has is not one the other enforces.
        _ => None,
    }
}

/// What is wrong with a query, in the terms both platforms' errors use.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamError {
    /// A name the method does not take.
    Unknown { name: String, value: String },
    /// A required parameter absent or empty.
    Missing { name: String },
    /// A value (or list item) that is not of the parameter's type.
    BadType {
        name: String,
        value: String,
        kind: Kind,
    },
    /// A value (or list item) outside the parameter's enum.
    BadEnum {
        name: String,
        value: String,
        allowed: Vec<String>,
    },
    /// A number outside `minimum..=maximum`, or a list with too few or too many items.
    OutOfRange {
        name: String,
        value: String,
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    /// A non-repeated parameter given more than once.
    Repeated { name: String },
}

impl ParamError {
    /// The name of the parameter at fault.
    pub fn name(&self) -> &str {
        match self {
            Self::Unknown { name, .. }
            | Self::Missing { name }
            | Self::BadType { name, .. }
            | Self::BadEnum { name, .. }
            | Self::OutOfRange { name, .. }
            | Self::Repeated { name } => name,
        }
    }

    /// The value at fault ("" when there is none).
    pub fn value(&self) -> &str {
        match self {
            Self::Unknown { value, .. }
            | Self::BadType { value, .. }
            | Self::BadEnum { value, .. }
            | Self::OutOfRange { value, .. } => value,
            Self::Missing { .. } | Self::Repeated { .. } => "",
        }
    }

    /// The protocol rule recorded with the violation.
    pub fn rule(&self) -> &'static str {
        match self {
            Self::Unknown { .. } => "unknown_parameter",
            Self::Missing { .. } => "missing_parameter",
            Self::BadType { .. } => "invalid_type",
            Self::BadEnum { .. } => "invalid_enum",
            Self::OutOfRange { .. } => "out_of_range",
            Self::Repeated { .. } => "repeated_parameter",
        }
    }
}

/// Checks `pairs` (a decoded query string) against a method's `params`: every name known, each
/// value of its type, within its enum and bounds, non-repeated parameters once, and every
/// required one present and non-empty. The first fault found is returned, unknown names first
/// (the platforms reject a request they cannot bind before validating it).
pub fn check_query(
    params: &BTreeMap<String, Param>,
    pairs: &[(String, String)],
) -> Result<(), ParamError> {
    if let Some((name, value)) = pairs.iter().find(|(name, _)| !params.contains_key(name)) {
        return Err(ParamError::Unknown {
            name: name.clone(),
            value: value.clone(),
        });
    }
    for (name, param) in params {
        let values: Vec<&str> = pairs
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect();
        if values.len() > 1 && !param.repeated {
            return Err(ParamError::Repeated { name: name.clone() });
        }
        for value in values.iter().filter(|v| !v.is_empty()) {
            check_value(name, param, value)?;
        }
        if param.required && values.iter().all(|v| v.is_empty()) {
            return Err(ParamError::Missing { name: name.clone() });
        }
    }
    Ok(())
}

fn check_value(name: &str, param: &Param, value: &str) -> Result<(), ParamError> {
    let items: Vec<&str> = if param.list {
        value.split(',').collect()
    } else {
        vec![value]
    };
    let out_of_range = || ParamError::OutOfRange {
        name: name.to_string(),
        value: value.to_string(),
        minimum: param.min_items.map(|n| n as f64).or(param.minimum),
        maximum: param.max_items.map(|n| n as f64).or(param.maximum),
    };
    if param.min_items.is_some_and(|min| items.len() < min)
        || param.max_items.is_some_and(|max| items.len() > max)
    {
        return Err(out_of_range());
    }
    for item in items {
        if !param.kind.accepts(item) {
            return Err(ParamError::BadType {
                name: name.to_string(),
                value: item.to_string(),
                kind: param.kind,
            });
        }
        if !param.enum_values.is_empty() && !param.enum_values.iter().any(|e| e == item) {
            return Err(ParamError::BadEnum {
                name: name.to_string(),
                value: item.to_string(),
                allowed: param.enum_values.clone(),
            });
        }
        if matches!(param.kind, Kind::Integer | Kind::Number)
            && let Ok(number) = item.parse::<f64>()
            && (param.minimum.is_some_and(|min| number < min)
                || param.maximum.is_some_and(|max| number > max))
        {
            return Err(ParamError::OutOfRange {
                name: name.to_string(),
                value: item.to_string(),
                minimum: param.minimum,
                maximum: param.maximum,
            });
        }
    }
    Ok(())
}

/// The property names a request body may have, per object: `""` is the body itself, `"snippet"`
/// the object under its `snippet` key, and so on. An object not listed is open (a map, or a
/// schema without properties) and is not checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BodyShape {
    pub objects: BTreeMap<String, std::collections::BTreeSet<String>>,
    /// Top-level properties every request must have.
    pub required: Vec<String>,
}

impl BodyShape {
    /// Adds `other` (the same body in another version or content type): the union of the
    /// properties, required only what both require.
    pub fn merge(&mut self, other: &BodyShape) {
        for (object, names) in &other.objects {
            self.objects
                .entry(object.clone())
                .or_default()
                .extend(names.iter().cloned());
        }
        self.required.retain(|name| other.required.contains(name));
    }

    /// The dotted path of the first property `body` has that its object does not declare.
    pub fn unknown_field(&self, body: &serde_json::Value) -> Option<String> {
        self.unknown_in("", body)
    }

    fn unknown_in(&self, path: &str, value: &serde_json::Value) -> Option<String> {
        let object = value.as_object()?;
        let allowed = self.objects.get(path);
        for (name, inner) in object {
            let here = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}.{name}")
            };
            if allowed.is_some_and(|names| !names.contains(name)) {
                return Some(here);
            }
            if let Some(found) = self.unknown_in(&here, inner) {
                return Some(found);
            }
        }
        None
    }

    /// The first required top-level property `body` lacks.
    pub fn missing_field(&self, body: &serde_json::Value) -> Option<&str> {
        self.required
            .iter()
            .find(|name| {
                body.get(name.as_str())
                    .is_none_or(serde_json::Value::is_null)
            })
            .map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(raw: &[(&str, &str)]) -> Vec<(String, String)> {
        raw.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn lists_are_checked_item_by_item_and_bounds_apply() {
        let mut params = BTreeMap::new();
        let mut fields = Param::new(Kind::String);
        fields.list = true;
        fields.enum_values = vec!["id".into(), "text".into()];
        params.insert("tweet.fields".to_string(), fields);
        let mut max = Param::new(Kind::Integer);
        max.minimum = Some(5.0);
        max.maximum = Some(100.0);
        params.insert("max_results".to_string(), max);
        let mut ids = Param::new(Kind::String);
        ids.required = true;
        params.insert("ids".to_string(), ids);

        assert_eq!(
            check_query(
                &params,
                &pairs(&[("ids", "1"), ("tweet.fields", "id,text")])
            ),
            Ok(())
        );
        assert_eq!(
            check_query(
                &params,
                &pairs(&[("ids", "1"), ("tweet.fields", "id,nope")])
            )
            .map_err(|e| (e.rule(), e.value().to_string())),
            Err(("invalid_enum", "nope".to_string()))
        );
        assert_eq!(
            check_query(&params, &pairs(&[("ids", "1"), ("max_results", "x")]))
                .map_err(|e| e.rule()),
            Err("invalid_type")
        );
        assert_eq!(
            check_query(&params, &pairs(&[("ids", "1"), ("max_results", "4")]))
                .map_err(|e| e.rule()),
            Err("out_of_range")
        );
        assert_eq!(
            check_query(&params, &pairs(&[("ids", "")])).map_err(|e| e.rule()),
            Err("missing_parameter")
        );
        assert_eq!(
            check_query(&params, &pairs(&[("ids", "1"), ("foo", "1")])).map_err(|e| e.rule()),
            Err("unknown_parameter")
        );
        assert_eq!(
            check_query(&params, &pairs(&[("ids", "1"), ("ids", "2")])).map_err(|e| e.rule()),
            Err("repeated_parameter")
        );
    }
}
