//! Who may open a session, and as what (issue 42: "believe nothing a peer or agent asserts
//! beyond its credentials").
//!
//! Every principal (a host's agent, a ToR, the provisioning system, a directory server) has
//! its own token from the operator's configuration (`[[principals]]`) and a role that decides
//! which requests its sessions may send. A session's Hello states a role, an AA and a token; it
//! is admitted only if a principal of that role holds that token, and, for an agent, the
//! credential names that AA. So:
//!
//! - an agent looks up only as an AA its credential names (VL2 §4.2.1: the requester's service
//!   decides what it may resolve), and receives only that AA's corrections;
//! - only provisioners update and remove (VL2 §4.3.2: updates come from the network
//!   provisioning system), within the services their credential names (`authorisation.rs`);
//! - only ToRs report misdeliveries, and only directory servers push to each other.
//!
//! Per-principal tokens stand in for mutual TLS: they are sent in clear in the Hello, so the
//! directory's network must be trusted not to be sniffed, or wrapped in TLS (docs/directory.md,
//! threat model). Tokens are compared in constant time; a Hello costs one comparison per
//! principal of the stated role (per AA for agents).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};

use crate::address::Aa;
use crate::authorisation::Services;
use crate::wire::message::MAX_TOKEN_LEN;
use crate::wire::Role;

/// The shortest token accepted: 16 bytes (`openssl rand -hex 16` gives 32 characters).
pub const MIN_TOKEN_LEN: usize = 16;

/// One `[[principals]]` entry as written in the config file.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PrincipalConfig {
    /// Names the principal in logs and errors; unique.
    pub name: String,
    /// "agent", "tor", "provisioner" or "peer".
    pub role: String,
    /// The principal's own secret. Give `token` or `token_file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// Agents only: the AAs the agent may speak as (its host's VMs), or `["*"]` for any AA
    /// (test clusters only: such an agent bypasses service isolation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aas: Option<Vec<String>>,
    /// Provisioners only: the services it may write, or `["*"]` for every service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub services: Option<Vec<String>>,
}

impl PrincipalConfig {
    /// A principal with an inline token and neither AAs nor services (set them as the role
    /// needs).
    pub fn new(name: &str, role: Role, token: &str) -> PrincipalConfig {
        PrincipalConfig { name: name.into(), role: role.name().into(), token: Some(token.into()), token_file: None, aas: None, services: None }
    }

    /// This entry as a `[[principals]]` table of a config file.
    pub fn to_toml(&self) -> String {
        format!("[[principals]]\n{}", toml::to_string(self).expect("a principal serialises"))
    }

    /// Reads `token_file` (relative to `folder`, the config file's) into `token`.
    pub fn read_token_file(&mut self, folder: &Path) -> Result<(), String> {
        let Some(file) = &self.token_file else { return Ok(()) };
        if self.token.is_some() {
            return Err("token, token_file: give one of them, not both".into());
        }
        let file = if file.is_relative() { folder.join(file) } else { file.clone() };
        let token = std::fs::read_to_string(&file).map_err(|e| format!("token_file: cannot read {}: {e}", file.display()))?;
        self.token = Some(token.trim().to_string());
        Ok(())
    }
}

/// The AAs an agent may speak as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Aas {
    Any,
    Only(FxHashSet<Aa>),
}

/// An authenticated principal: what a session may do is decided from this, never from what the
/// session's requests assert.
#[derive(Debug)]
pub struct Principal {
    pub name: String,
    pub role: Role,
    token: Vec<u8>,
    /// Agents: the AAs it may speak as.
    pub aas: Aas,
    /// Provisioners: the services it may write.
    pub services: Services,
}

impl Principal {
    /// The token this principal presents (a server's own peer credential, to push with).
    pub fn token(&self) -> &[u8] {
        &self.token
    }
}

/// Every principal a directory server admits, indexed for the Hello.
#[derive(Debug, Default)]
pub struct Credentials {
    principals: Vec<Arc<Principal>>,
    /// Agents by the AAs they name; agents with `aas = ["*"]` apart.
    agents: FxHashMap<Aa, Vec<usize>>,
    any_aa_agents: Vec<usize>,
    /// Everyone else by role.
    others: FxHashMap<u8, Vec<usize>>,
}

/// Constant-time comparison, so response timing does not reveal how much of a token was right.
fn token_matches(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len() && given.iter().zip(expected).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

impl Credentials {
    /// Compiles `[[principals]]` (tokens already read from their files). Errors name the entry
    /// and the field and say how to fix it.
    pub fn new(configs: &[PrincipalConfig]) -> Result<Credentials, String> {
        if configs.is_empty() {
            return Err("principals: none; every session authenticates as a principal with its own token: add [[principals]] entries \
                 (name, role = \"agent\" | \"tor\" | \"provisioner\" | \"peer\", token_file), see docs/directory.md#credentials"
                .into());
        }
        let mut credentials = Credentials::default();
        let mut names = FxHashMap::default();
        let mut tokens: FxHashMap<&str, usize> = FxHashMap::default();
        for (i, c) in configs.iter().enumerate() {
            let at = format!("principals[{i}] ({})", c.name);
            if c.name.is_empty() {
                return Err(format!("principals[{i}].name: empty; name every principal, e.g. name = \"provisioning\""));
            }
            if let Some(first) = names.insert(c.name.as_str(), i) {
                return Err(format!("{at}.name: principals[{first}] has the same name; names must be unique"));
            }
            let role = Role::from_name(&c.role).ok_or_else(|| format!("{at}.role: '{}' is not \"agent\", \"tor\", \"provisioner\" or \"peer\"", c.role))?;
            let token = c.token.as_deref().ok_or_else(|| format!("{at}.token: missing; set token_file = \"path\" (or token = \"...\")"))?;
            if token.len() < MIN_TOKEN_LEN || token.len() > MAX_TOKEN_LEN {
                return Err(format!(
                    "{at}.token: {} bytes; use {MIN_TOKEN_LEN} to {MAX_TOKEN_LEN} random bytes, e.g. `openssl rand -hex 16 > {}.token`",
                    token.len(),
                    c.name
                ));
            }
            if let Some(first) = tokens.insert(token, i) {
                return Err(format!("{at}.token: the same as principals[{first}]'s; every principal needs its own token (it is what identifies it)"));
            }
            let aas = match (role, &c.aas) {
                (Role::Agent, None) => {
                    return Err(format!("{at}.aas: missing; list the AAs this agent may speak as, e.g. aas = [\"10.0.0.5\"]"));
                }
                (Role::Agent, Some(list)) if list.iter().any(|a| a == "*") => Aas::Any,
                (Role::Agent, Some(list)) if list.is_empty() => {
                    return Err(format!("{at}.aas: empty; list the AAs this agent may speak as, e.g. aas = [\"10.0.0.5\"]"));
                }
                (Role::Agent, Some(list)) => Aas::Only(list.iter().map(|a| a.parse::<Aa>().map_err(|e| format!("{at}.aas: {e}"))).collect::<Result<_, _>>()?),
                (_, Some(_)) => return Err(format!("{at}.aas: only agents speak as AAs; remove it from this {} principal", role.name())),
                (_, None) => Aas::Only(FxHashSet::default()),
            };
            let services = match (role, &c.services) {
                (Role::Provisioner, None) => {
                    return Err(format!("{at}.services: missing; list the services this provisioner may write, e.g. services = [\"web\"], or [\"*\"] for all"));
                }
                (Role::Provisioner, Some(list)) if list.iter().any(|s| s == "*") => Services::Any,
                (Role::Provisioner, Some(list)) if list.is_empty() => {
                    return Err(format!("{at}.services: empty; list the services this provisioner may write, e.g. services = [\"web\"]"));
                }
                (Role::Provisioner, Some(list)) => {
                    for s in list {
                        crate::mapping::validate_service(s).map_err(|e| format!("{at}.services: {e}"))?;
                    }
                    Services::Only(list.iter().cloned().collect())
                }
                (_, Some(_)) => return Err(format!("{at}.services: only provisioners write services; remove it from this {} principal", role.name())),
                (_, None) => Services::Only(FxHashSet::default()),
            };
            let index = credentials.principals.len();
            match (&aas, role) {
                (Aas::Any, _) => credentials.any_aa_agents.push(index),
                (Aas::Only(list), Role::Agent) => {
                    for aa in list {
                        credentials.agents.entry(*aa).or_default().push(index);
                    }
                }
                _ => credentials.others.entry(role as u8).or_default().push(index),
            }
            credentials.principals.push(Arc::new(Principal { name: c.name.clone(), role, token: token.as_bytes().to_vec(), aas, services }));
        }
        Ok(credentials)
    }

    /// The principal a Hello authenticates, or why it does not.
    pub fn authenticate(&self, role: Role, aa: Aa, token: &[u8]) -> Result<Arc<Principal>, String> {
        let none = Vec::new();
        let candidates: Vec<usize> = match role {
            Role::Agent => self.agents.get(&aa).unwrap_or(&none).iter().chain(&self.any_aa_agents).copied().collect(),
            other => self.others.get(&(other as u8)).unwrap_or(&none).clone(),
        };
        // Compare against every candidate, so the time taken does not say which one matched.
        let mut found = None;
        for i in candidates {
            if token_matches(token, &self.principals[i].token) && found.is_none() {
                found = Some(i);
            }
        }
        match found {
            Some(i) => Ok(self.principals[i].clone()),
            None if role == Role::Agent => {
                Err(format!("unauthenticated: wrong token for an agent speaking as {aa}: an agent's credential names the AAs it may speak as (principals.aas)"))
            }
            None => Err(format!("unauthenticated: wrong token for a {} session: each principal has its own token", role.name())),
        }
    }

    /// The principal named `name` with role `role`, if configured.
    pub fn principal(&self, name: &str, role: Role) -> Option<&Arc<Principal>> {
        self.principals.iter().find(|p| p.name == name && p.role == role)
    }

    pub fn principals(&self) -> impl Iterator<Item = &Arc<Principal>> {
        self.principals.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(name: &str, role: &str, token: &str) -> PrincipalConfig {
        PrincipalConfig { name: name.into(), role: role.into(), token: Some(token.into()), token_file: None, aas: None, services: None }
    }

    fn sample() -> Vec<PrincipalConfig> {
        vec![
            PrincipalConfig { aas: Some(vec!["10.0.0.1".into(), "10.0.0.2".into()]), ..p("host1", "agent", "agent-one-token-0123") },
            PrincipalConfig { aas: Some(vec!["10.0.0.7".into()]), ..p("host7", "agent", "agent-seven-token-01") },
            PrincipalConfig { services: Some(vec!["web".into()]), ..p("web-prov", "provisioner", "provisioner-web-token") },
            p("tor3", "tor", "tor-three-token-0123"),
            p("ds0", "peer", "peer-ds0-token-01234"),
        ]
    }

    #[test]
    fn a_hello_is_admitted_only_with_its_own_roles_token_and_an_aa_its_credential_names() {
        let c = Credentials::new(&sample()).unwrap();
        let one: Aa = "10.0.0.1".parse().unwrap();
        let seven: Aa = "10.0.0.7".parse().unwrap();
        assert_eq!(c.authenticate(Role::Agent, one, b"agent-one-token-0123").unwrap().name, "host1");
        let err = c.authenticate(Role::Agent, one, b"agent-seven-token-01").unwrap_err();
        assert!(err.starts_with("unauthenticated: wrong token for an agent speaking as 10.0.0.1"), "{err}");
        assert_eq!(c.authenticate(Role::Agent, seven, b"agent-seven-token-01").unwrap().name, "host7");
        let web = c.authenticate(Role::Provisioner, Aa(0), b"provisioner-web-token").unwrap();
        assert!(web.services.contains("web") && !web.services.contains("db"));
        assert!(c.authenticate(Role::Peer, Aa(0), b"agent-one-token-0123").is_err(), "an agent's token opens no peer session");
        assert!(c.authenticate(Role::Provisioner, Aa(0), b"tor-three-token-0123").is_err());
        assert!(c.authenticate(Role::Tor, Aa(0), b"tor-three-token-0123").is_ok());
        assert!(c.authenticate(Role::Peer, Aa(0), b"peer-ds0-token-01234").is_ok());
        assert!(c.principal("ds0", Role::Peer).is_some());
    }

    #[test]
    fn mistakes_name_the_principal_and_the_field() {
        let err = |mut list: Vec<PrincipalConfig>, f: fn(&mut Vec<PrincipalConfig>)| {
            f(&mut list);
            Credentials::new(&list).unwrap_err()
        };
        assert!(err(sample(), |l| l[3].token = Some("short".into())).starts_with("principals[3] (tor3).token: 5 bytes; use 16 to 255"));
        assert!(err(sample(), |l| l[3].token = l[4].token.clone()).starts_with("principals[4] (ds0).token: the same as principals[3]'s"));
        assert!(err(sample(), |l| l[3].role = "switch".into()).starts_with("principals[3] (tor3).role: 'switch' is not"));
        assert!(err(sample(), |l| l[0].aas = None).starts_with("principals[0] (host1).aas: missing"));
        assert!(err(sample(), |l| l[0].aas = Some(vec!["ten".into()])).contains("is not an application address"));
        assert!(err(sample(), |l| l[2].services = None).starts_with("principals[2] (web-prov).services: missing"));
        assert!(err(sample(), |l| l[3].services = Some(vec!["web".into()])).contains("only provisioners write services"));
        assert!(err(sample(), |l| l[4].name = "tor3".into()).contains("same name"));
        assert!(Credentials::new(&[]).unwrap_err().starts_with("principals: none"));
    }
}
