//! `max.connections` and `max.connections.per.ip`, counted at accept time.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

pub(crate) struct ConnectionQuotas {
    max_connections: usize,
    max_per_ip: usize,
    overrides: HashMap<IpAddr, usize>,
    counts: Mutex<(usize, HashMap<IpAddr, usize>)>,
}

/// Held by a live connection; gives its slot back when dropped.
pub(crate) struct ConnectionSlot {
    quotas: Arc<ConnectionQuotas>,
    ip: IpAddr,
}

impl ConnectionQuotas {
    pub(crate) fn new(
        max_connections: usize,
        max_per_ip: usize,
        overrides: HashMap<IpAddr, usize>,
    ) -> Arc<Self> {
        Arc::new(Self {
            max_connections,
            max_per_ip,
            overrides,
            counts: Mutex::new((0, HashMap::new())),
        })
    }

    /// Takes a slot for a new connection from `ip`, or `None` when a limit is reached.
    pub(crate) fn try_acquire(self: &Arc<Self>, ip: IpAddr) -> Option<ConnectionSlot> {
        let limit = self.overrides.get(&ip).copied().unwrap_or(self.max_per_ip);
        let mut guard = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let (total, per_ip) = &mut *guard;
        let count = per_ip.entry(ip).or_insert(0);
        if *total >= self.max_connections || *count >= limit {
            if *count == 0 {
                per_ip.remove(&ip);
            }
            return None;
        }
        *count += 1;
        *total += 1;
        Some(ConnectionSlot {
            quotas: Arc::clone(self),
            ip,
        })
    }

    pub(crate) fn total(&self) -> usize {
        self.counts.lock().unwrap_or_else(|e| e.into_inner()).0
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let mut guard = self.quotas.counts.lock().unwrap_or_else(|e| e.into_inner());
        let (total, per_ip) = &mut *guard;
        *total -= 1;
        if let Some(count) = per_ip.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                per_ip.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_ip_and_total_limits() {
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let quotas = ConnectionQuotas::new(3, 2, HashMap::from([(b, 1)]));
        let a1 = quotas.try_acquire(a).unwrap();
        let _a2 = quotas.try_acquire(a).unwrap();
        assert!(quotas.try_acquire(a).is_none(), "per-ip limit");
        let _b1 = quotas.try_acquire(b).unwrap();
        assert!(quotas.try_acquire(b).is_none(), "override limit");
        drop(a1);
        assert_eq!(quotas.total(), 2);
        let _a3 = quotas.try_acquire(a).unwrap();
        assert!(
            quotas.try_acquire("127.0.0.3".parse().unwrap()).is_none(),
            "total limit"
        );
    }
}
