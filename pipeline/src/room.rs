//! The room a worker thread keeps between its jobs for the two buffers a
//! small image takes: the bytes of a file it reads and the pixels it
//! decodes. Each is taken for one job and given back at its end.
//!
//! Why: a look-up of a shared thumbnail allocates and frees about 100 KB.
//! glibc's allocator gives a thread's freed top of heap back to the kernel
//! once it passes 128 KB (a `madvise`, whose TLB flush interrupts every
//! core) and faults it in again at the next job; that was a quarter of a
//! look-up's time. Kept here, it is allocated once per thread.
//!
//! Owned by the thread that takes it (a thread-local); freed when that
//! thread ends. A buffer larger than [`KEPT_BYTES`] is not kept, so a
//! thread keeps at most that much for each kind.

use std::cell::Cell;
use std::thread::LocalKey;

/// The largest buffer a thread keeps, for each kind: the pixels of a
/// 256 px RGBA thumbnail (256 KiB) and the file of one written stored,
/// with room to spare.
pub(crate) const KEPT_BYTES: usize = 288 * 1024;

thread_local! {
    static FILE_BYTES: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
    static PIXELS: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Which of a thread's kept buffers.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Room {
    /// The bytes of a small file being read.
    #[cfg_attr(not(feature = "shared-thumbnails"), allow(dead_code))]
    FileBytes,
    /// The pixels of an image being decoded.
    Pixels,
}

impl Room {
    fn key(self) -> &'static LocalKey<Cell<Vec<u8>>> {
        match self {
            Room::FileBytes => &FILE_BYTES,
            Room::Pixels => &PIXELS,
        }
    }

    /// This thread's buffer, empty, with the room it kept (none if it is
    /// taken already, or was never given back).
    pub(crate) fn take(self) -> Vec<u8> {
        let mut bytes = self.key().take();
        bytes.clear();
        bytes
    }

    /// `len` zeros in this thread's buffer when it has the room, else in
    /// a new one (the kept one is freed first, not grown: growing copies
    /// it).
    pub(crate) fn take_zeroed(self, len: usize) -> Vec<u8> {
        let mut bytes = self.take();
        if bytes.capacity() < len {
            drop(bytes);
            return vec![0; len];
        }
        bytes.resize(len, 0);
        bytes
    }

    /// Keeps `bytes`' room for this thread's next [`take`](Self::take)
    /// if it is more than the room kept now and at most [`KEPT_BYTES`]:
    /// an image's small result given back after its larger decode leaves
    /// the decode's room kept.
    pub(crate) fn give_back(self, bytes: Vec<u8>) {
        let kept = self.key().take();
        if bytes.capacity() <= KEPT_BYTES && bytes.capacity() > kept.capacity() {
            drop(kept);
            self.key().set(bytes);
        } else {
            self.key().set(kept);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `test` on a thread of its own, whose rooms start empty.
    fn on_a_new_thread(test: impl FnOnce() + Send + 'static) {
        std::thread::Builder::new()
            .name("room-test".into())
            .spawn(test)
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn a_buffer_given_back_is_taken_again_empty_and_zeroed() {
        on_a_new_thread(|| {
            let mut bytes = Room::Pixels.take_zeroed(1000);
            assert_eq!(bytes, vec![0; 1000]);
            bytes.fill(7);
            let kept = bytes.as_ptr();
            Room::Pixels.give_back(bytes);
            // The other kind's room is its own.
            assert_eq!(Room::FileBytes.take().capacity(), 0);
            let again = Room::Pixels.take_zeroed(600);
            assert_eq!((again.as_ptr(), again), (kept, vec![0; 600]));
            // Taken, it is gone until given back.
            assert_eq!(Room::Pixels.take().capacity(), 0);
            // Too small for what is asked: a new buffer.
            Room::Pixels.give_back(Vec::with_capacity(100));
            assert_eq!(Room::Pixels.take_zeroed(101), vec![0; 101]);
            assert_eq!(Room::Pixels.take().capacity(), 0);
        });
    }

    #[test]
    fn the_larger_room_is_kept_up_to_its_bound() {
        on_a_new_thread(|| {
            Room::Pixels.give_back(Vec::with_capacity(5000));
            Room::Pixels.give_back(Vec::with_capacity(300));
            assert_eq!(Room::Pixels.take().capacity(), 5000);
            Room::Pixels.give_back(Vec::with_capacity(KEPT_BYTES));
            assert_eq!(Room::Pixels.take().capacity(), KEPT_BYTES);
            Room::Pixels.give_back(Vec::with_capacity(KEPT_BYTES + 1));
            assert_eq!(Room::Pixels.take().capacity(), 0);
        });
        // Given back on another thread, it was that thread's.
        on_a_new_thread(|| Room::Pixels.give_back(vec![1; 100]));
        on_a_new_thread(|| assert_eq!(Room::Pixels.take().capacity(), 0));
    }
}
