//! Address assignment for new groups (Li & Freedman §3.1.2, step 3): a new group gets an address in
//! the partition with the fewest addresses in use, then the fewest heavy-traffic groups, then the
//! lowest index (our tie-break, for determinism).
//!
//! "Heavy" is not defined in the paper; we call a group heavy when its traffic rate is at least
//! `heavy_rate` (evaluation default 8 of the paper's 1..10, the top 30% of rates).

/// Addresses and heavy groups in use per partition.
#[derive(Clone, Debug)]
pub struct Assigner {
    pub addresses: Vec<u32>,
    pub heavy: Vec<u32>,
}

impl Assigner {
    pub fn new(n: u32) -> Assigner {
        Assigner { addresses: vec![0; n as usize], heavy: vec![0; n as usize] }
    }

    /// The partition for a new group, which is then counted in it.
    pub fn assign(&mut self, heavy: bool) -> u32 {
        let mut best = 0;
        for p in 1..self.addresses.len() {
            if (self.addresses[p], self.heavy[p]) < (self.addresses[best], self.heavy[best]) {
                best = p;
            }
        }
        self.addresses[best] += 1;
        self.heavy[best] += heavy as u32;
        best as u32
    }

    /// A group is removed.
    pub fn release(&mut self, p: u32, heavy: bool) {
        self.addresses[p as usize] -= 1;
        self.heavy[p as usize] -= heavy as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fewest_addresses_then_fewest_heavy() {
        let mut a = Assigner::new(3);
        assert_eq!([a.assign(true), a.assign(false), a.assign(false)], [0, 1, 2]);
        // All hold one address; 1 and 2 hold no heavy group: the lowest of them.
        assert_eq!(a.assign(true), 1);
        // Addresses (1, 2, 1), heavy (1, 1, 0): 0 and 2 tie on addresses, 2 has fewer heavy.
        assert_eq!(a.assign(false), 2);
        a.release(0, true);
        // Addresses (0, 2, 2): partition 0.
        assert_eq!(a.assign(false), 0);
        assert_eq!(a.addresses, vec![1, 2, 2]);
        assert_eq!(a.heavy, vec![0, 1, 0]);
    }
}
