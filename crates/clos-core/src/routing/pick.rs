//! Picking one member of an equal-cost group with a hash (ECMP's choice, RFC 2992's hash-threshold
//! in effect): by multiply-shift, so no modulo bias worth mentioning and no division. The routes
//! (`routing`) answer a hop with it directly where the group is known; the load balancers (`lb`)
//! use it for their own choices.

/// One of `group`, chosen by `hash`.
#[inline]
pub fn pick(group: &[u32], hash: u64) -> u32 {
    debug_assert!(!group.is_empty(), "no route: the topology builder guarantees connectivity");
    group[pick_index(group.len(), hash)]
}

/// An index below `len`, chosen by `hash`.
#[inline]
pub fn pick_index(len: usize, hash: u64) -> usize {
    ((hash as u128 * len as u128) >> 64) as usize
}
