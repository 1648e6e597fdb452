//! Pushing acknowledged updates to other directory servers (VL2 §4.3.2: "the directory server
//! can optionally disseminate the acknowledged updates to a few other directory servers"), and
//! handing them corrections for agents that have no session with this server.
//!
//! Best effort by design: the store's change stream and the lazy resynchronisation deliver every
//! update anyway; a push only gets there first. A lagging or unreachable peer loses pushes, never
//! blocks the pushing server.
//!
//! A server pushes with its own peer credential (the peer principal named as itself), and the
//! receiver believes a push only within the revisions the store has shown it, until the store
//! confirms it (`table.rs`); a forwarded correction is only a hint, which the receiver checks
//! against its own committed entry (issue 42). With TLS on, the pushing server checks the
//! peer's certificate against `[tls] ca`, as any client does (`tls.rs`).

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::sync::broadcast::{self, error::RecvError};
use tracing::{debug, info, warn};

use crate::address::Aa;
use crate::batcher::PeerMessage;
use crate::tls::ClientTls;
use crate::wire::{Request, Role};

/// Pushes to `peer` for ever, presenting `token` (this server's peer credential), in TLS if
/// `tls` is given.
pub async fn push_to_peers(peer: SocketAddr, token: Vec<u8>, tls: Option<ClientTls>, mut committed: broadcast::Receiver<PeerMessage>) {
    loop {
        match crate::tls::connect(peer, tls.as_ref()).await {
            // The peer answers only the Hello (and a rejection); the read half is kept so that
            // the connection stays open, and never read.
            Ok((_replies, mut stream)) => {
                info!(%peer, "pushing acknowledged updates to peer");
                let mut out = Vec::new();
                Request::Hello { role: Role::Peer, aa: Aa(0), token: token.clone(), protocol: 1 }.encode(&mut out);
                loop {
                    match committed.recv().await {
                        Ok(message) => {
                            encode(message, &mut out);
                            while let Ok(message) = committed.try_recv() {
                                encode(message, &mut out);
                            }
                        }
                        Err(RecvError::Lagged(n)) => debug!(%peer, skipped = n, "peer push lagged"),
                        Err(RecvError::Closed) => return,
                    }
                    if stream.write_all(&out).await.is_err() || stream.flush().await.is_err() {
                        break;
                    }
                    out.clear();
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => warn!(%peer, error = %e, "peer not trusted; not pushing to it"),
            Err(e) => debug!(%peer, error = %e, "peer unreachable"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

fn encode(message: PeerMessage, out: &mut Vec<u8>) {
    let request = match message {
        PeerMessage::Committed { aa, versioned } => Request::PeerPush { aa, revision: versioned.revision, mapping: versioned.mapping },
        PeerMessage::Correction { sender, target, la, revision } => Request::PeerCorrection { sender, target, la, revision },
    };
    request.encode(out);
}
