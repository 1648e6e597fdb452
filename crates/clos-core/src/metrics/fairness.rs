//! Jain's fairness index: (Σx)² / (n·Σx²); 1 when all equal, 1/n when one takes everything.

pub fn jain(x: &[f64]) -> Option<f64> {
    let sum: f64 = x.iter().sum();
    let sq: f64 = x.iter().map(|v| v * v).sum();
    (sq > 0.0).then(|| sum * sum / (x.len() as f64 * sq))
}

#[cfg(test)]
mod tests {
    use super::jain;

    #[test]
    fn jain_bounds() {
        assert_eq!(jain(&[3.0, 3.0, 3.0]), Some(1.0));
        assert!((jain(&[1.0, 0.0, 0.0, 0.0]).unwrap() - 0.25).abs() < 1e-12);
        assert_eq!(jain(&[]), None);
    }
}
