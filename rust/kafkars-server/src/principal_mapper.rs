//! Kafka's `ssl.principal.mapping.rules`: how an SSL client's certificate subject becomes
//! its principal name.
//!
//! The rules are a comma-separated list of `RULE:pattern/replacement/` (optionally ending
//! `L` or `U` to lower- or upper-case the result) and `DEFAULT` (the subject unchanged).
//! The first rule whose pattern matches the whole subject DN names the client; a subject
//! no rule matches is refused, as Kafka refuses it.

use regex::Regex;

#[derive(Debug)]
enum Rule {
    Default,
    Replace {
        pattern: Regex,
        replacement: String,
        case: Case,
    },
}

#[derive(Debug, Clone, Copy)]
enum Case {
    Keep,
    Lower,
    Upper,
}

/// A rule list that does not parse; the message says where.
#[derive(Debug, thiserror::Error)]
#[error("ssl.principal.mapping.rules: {0}")]
pub struct MappingRulesError(String);

/// Parsed `ssl.principal.mapping.rules`.
#[derive(Debug)]
pub struct PrincipalMapper {
    rules: Vec<Rule>,
}

impl PrincipalMapper {
    pub fn parse(rules: &str) -> Result<Self, MappingRulesError> {
        let mut parsed = Vec::new();
        let mut rest = rules.trim();
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix("DEFAULT") {
                parsed.push(Rule::Default);
                rest = after;
            } else if let Some(after) = rest.strip_prefix("RULE:") {
                // pattern/replacement/[LU]: neither part may hold a '/', but a pattern
                // may hold commas, so split on the slashes first.
                let mut parts = after.splitn(3, '/');
                let (Some(pattern), Some(replacement), Some(tail)) =
                    (parts.next(), parts.next(), parts.next())
                else {
                    return Err(MappingRulesError(format!(
                        "expected RULE:pattern/replacement/ in {after:?}"
                    )));
                };
                let (case, tail) = match tail.chars().next() {
                    Some('L') => (Case::Lower, &tail[1..]),
                    Some('U') => (Case::Upper, &tail[1..]),
                    _ => (Case::Keep, tail),
                };
                // The whole subject must match, as Java's Matcher.matches() requires.
                let pattern = Regex::new(&format!("^(?:{pattern})$"))
                    .map_err(|e| MappingRulesError(format!("bad pattern {pattern:?}: {e}")))?;
                parsed.push(Rule::Replace {
                    pattern,
                    replacement: replacement.to_string(),
                    case,
                });
                rest = tail;
            } else {
                return Err(MappingRulesError(format!(
                    "expected DEFAULT or RULE: at {rest:?}"
                )));
            }
            rest = rest.trim_start();
            match rest.strip_prefix(',') {
                Some(after) => rest = after.trim_start(),
                None if rest.is_empty() => {}
                None => {
                    return Err(MappingRulesError(format!("expected ',' at {rest:?}")));
                }
            }
        }
        if parsed.is_empty() {
            parsed.push(Rule::Default);
        }
        Ok(Self { rules: parsed })
    }

    /// The principal name for a certificate subject, or `None` when no rule applies.
    pub fn name(&self, subject_dn: &str) -> Option<String> {
        for rule in &self.rules {
            match rule {
                Rule::Default => return Some(subject_dn.to_string()),
                Rule::Replace {
                    pattern,
                    replacement,
                    case,
                } => {
                    let Some(captures) = pattern.captures(subject_dn) else {
                        continue;
                    };
                    let mut name = String::new();
                    captures.expand(&java_replacement(replacement), &mut name);
                    return Some(match case {
                        Case::Keep => name,
                        Case::Lower => name.to_lowercase(),
                        Case::Upper => name.to_uppercase(),
                    });
                }
            }
        }
        None
    }
}

/// Java's `$1_x` is group 1 then `_x`; the regex crate would read a group named `1_x`.
fn java_replacement(replacement: &str) -> String {
    let mut out = String::with_capacity(replacement.len() + 4);
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(|d| d.is_ascii_digit()) {
            out.push_str("${");
            while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                out.push(d);
                chars.next();
            }
            out.push('}');
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_keeps_the_subject() {
        let mapper = PrincipalMapper::parse("DEFAULT").unwrap();
        assert_eq!(
            mapper.name("CN=alice,O=kafkars").unwrap(),
            "CN=alice,O=kafkars"
        );
        assert_eq!(
            PrincipalMapper::parse("").unwrap().name("CN=x").unwrap(),
            "CN=x"
        );
    }

    #[test]
    fn first_matching_rule_wins_with_case_and_commas_in_patterns() {
        let mapper = PrincipalMapper::parse(
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, RULE:^CN=([^,]*),O=(.*)$/$2_$1/U,DEFAULT",
        )
        .unwrap();
        assert_eq!(
            mapper
                .name("CN=Kafka-Client,OU=ServiceUsers,O=Acme")
                .unwrap(),
            "kafka-client"
        );
        assert_eq!(mapper.name("CN=alice,O=kafkars").unwrap(), "KAFKARS_ALICE");
        assert_eq!(mapper.name("UID=bob").unwrap(), "UID=bob");
    }

    #[test]
    fn no_matching_rule_refuses() {
        let mapper = PrincipalMapper::parse("RULE:^CN=(.*)$/$1/").unwrap();
        assert_eq!(mapper.name("CN=alice").unwrap(), "alice");
        assert!(mapper.name("O=nobody").is_none());
    }

    #[test]
    fn malformed_rules_are_errors() {
        for bad in ["RULE:abc", "NOPE", "DEFAULT DEFAULT", "RULE:(/x/"] {
            assert!(PrincipalMapper::parse(bad).is_err(), "{bad}");
        }
    }
}
