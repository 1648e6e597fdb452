//! The scenario format as a JSON Schema (`clos schema`), for TOML editors (Taplo, Even Better
//! TOML) to complete and check scenario files with.
//!
//! The schema is derived from the serde types the core reads a scenario into: `schemars` reads
//! their `rename_all`, `default` and `deny_unknown_fields` (unknown keys are refused:
//! `additionalProperties: false`) and turns their doc comments into descriptions, so it cannot
//! drift from the format. A type with a hand-written deserialiser (`Duration`, `HostSet`,
//! `Stop`, ...) states what it accepts beside its parser, in its own `impl JsonSchema`.
//!
//! The schema checks forms: keys, types, names, units and spellings. What needs the whole
//! scenario (ranges, a field that belongs to another `kind`, a host beyond the fabric) stays with
//! `clos validate`. It is JSON Schema draft 7, which editors and validators read widely; and it
//! never allows null, which TOML cannot write (serde reads a JSON null as an absent `Option`).
//!
//! schemars is not behind a cargo feature: it costs build time only (measured: about 11 s of CPU
//! for schemars and its derive macro in a release build, beside clos-core's own 26 s; the impls
//! it derives are never called by a run), and the extension, which every user has, needs it.

use super::Scenario;
use crate::lb::params::PARAMS;
use schemars::generate::SchemaSettings;
use schemars::transform::transform_subschemas;
use schemars::Schema;
use serde_json::{json, Value};

/// The JSON Schema of a scenario file (the TOML `clos run` reads), draft 7.
pub fn scenario_schema() -> Value {
    let mut settings = SchemaSettings::draft07();
    // Before draft 7's own transforms, which move a `$ref`'s siblings into an `allOf`.
    settings.transforms.insert(0, Box::new(for_toml as fn(&mut Schema)));
    settings.transforms.insert(1, Box::new(describe_routing_parameters as fn(&mut Schema)));
    let mut schema = settings.into_generator().into_root_schema_for::<Scenario>();
    schema.insert("title".into(), "clos scenario".into());
    schema.to_value()
}

/// Fits what schemars writes to TOML files and their editors: drops what TOML cannot write,
/// `null` among a field's types (schemars adds it to every `Option`) and `default: null`;
/// turns `format`s such as `uint32`, Rust's integer widths and no JSON Schema format, into the
/// bounds serde enforces; and joins a doc comment's lines into paragraphs.
fn for_toml(schema: &mut Schema) {
    let null = json!({"type": "null"});
    if let Some(object) = schema.as_object_mut() {
        if let Some(Value::Array(types)) = object.get_mut("type") {
            types.retain(|t| t != "null");
            if types.len() == 1 {
                let only = types.remove(0);
                object.insert("type".into(), only);
            }
        }
        if let Some(Value::Array(values)) = object.get_mut("enum") {
            values.retain(|v| !v.is_null());
        }
        if let Some(Value::Array(choices)) = object.get("anyOf") {
            if choices.contains(&null) {
                let mut kept: Vec<Value> = choices.iter().filter(|c| **c != null).cloned().collect();
                object.remove("anyOf");
                match kept.len() {
                    // `anyOf: [S, null]` is S, with the field's own keys (description, default).
                    1 => {
                        if let Value::Object(only) = kept.remove(0) {
                            for (key, value) in only {
                                object.entry(key).or_insert(value);
                            }
                        }
                    }
                    _ => {
                        object.insert("anyOf".into(), Value::Array(kept));
                    }
                }
            }
        }
        if object.get("default") == Some(&Value::Null) {
            object.remove("default");
        }
        if let Some(format) = object.get("format").and_then(Value::as_str).map(str::to_owned) {
            let bounds = match format.as_str() {
                "uint8" => Some((0, u8::MAX as i64)),
                "uint16" => Some((0, u16::MAX as i64)),
                "uint32" => Some((0, u32::MAX as i64)),
                // TOML's integers are 64-bit signed: no larger u64 can be written.
                "uint64" | "uint" => Some((0, i64::MAX)),
                _ => None,
            };
            if let Some((least, most)) = bounds {
                object.entry("minimum").or_insert(least.into());
                object.entry("maximum").or_insert(most.into());
            }
            if bounds.is_some() || format == "double" || format == "float" {
                object.remove("format");
            }
        }
        if let Some(Value::String(text)) = object.get_mut("description") {
            *text = text.split("\n\n").map(|p| p.replace('\n', " ")).collect::<Vec<_>>().join("\n\n");
        }
    }
    transform_subschemas(&mut for_toml, schema);
}

/// Each `[routing]` parameter's description says which schemes take it and its default, from
/// the registry that `clos schemes` prints ([`PARAMS`]).
fn describe_routing_parameters(schema: &mut Schema) {
    let Some(properties) = schema.pointer_mut("/definitions/RoutingSpec/properties").and_then(Value::as_object_mut) else { return };
    for p in PARAMS {
        let Some(Value::Object(field)) = properties.get_mut(p.name) else { continue };
        let schemes: Vec<&str> = p.schemes.iter().map(|s| s.name()).collect();
        let said = field.get("description").and_then(Value::as_str).unwrap_or(p.doc);
        let description = format!("{}. For {}; default {}.", said.trim_end_matches('.'), schemes.join(", "), p.default);
        field.insert("description".into(), description.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_refuses_unknown_keys_where_serde_does() {
        let schema = scenario_schema();
        assert_eq!(schema["$schema"], "http://json-schema.org/draft-07/schema#");
        assert_eq!(schema["additionalProperties"], false);
        for table in [
            "TopologySpec",
            "SwitchSpec",
            "HostSpec",
            "RoutingSpec",
            "TransportSpec",
            "WorkloadSpec",
            "OutputSpec",
            "FailureSpec",
            "DirectorySpec",
            "ServiceSpec",
        ] {
            assert_eq!(schema["definitions"][table]["additionalProperties"], false, "{table}");
        }
        // `workload` may be left out where a `[service]` makes the traffic (`Scenario::normalize`
        // then requires one or the other).
        assert_eq!(schema["required"], json!(["topology"]));
    }

    #[test]
    fn doc_comments_and_defaults_reach_the_schema() {
        let schema = scenario_schema();
        let transport = &schema["definitions"]["TransportSpec"]["properties"];
        assert!(transport["sack"]["description"].as_str().unwrap().starts_with("SACK on both ends"));
        assert_eq!(transport["rto_min"]["default"], "10ms");
        assert_eq!(transport["mss"]["default"], 1460);
        let drill = schema["definitions"]["RoutingSpec"]["properties"]["d"]["description"].as_str().unwrap();
        assert_eq!(drill, "DRILL: random samples per decision. For drill, drill-flow; default 2.");
    }

    #[test]
    fn nothing_in_the_schema_allows_null() {
        let text = scenario_schema().to_string();
        assert!(!text.contains("null"), "TOML has no null: {text}");
    }
}
