/// Chooses the format to capture in for a profile of `width`x`height` at `fps` frames per second. Pure.
///
/// Size first: the exact size, else the smallest offered that covers the profile in both directions (it is scaled
/// down), else the largest offered (it is scaled up). Then, at that size: a rate of at least `fps` (an unknown rate
/// ranks below that, a lower one last), then a raw layout (I420, NV12, YUYV: no decode) over MJPEG, then the higher
/// rate. Throws `noUsableFormat`, naming what the camera offers, when it offers nothing Parley can convert.
public func chooseCameraFormat(
    for camera: CameraInfo, width: Int, height: Int, fps: Int
) throws(CameraError) -> CameraFormat {
    let usable = camera.formats.filter { $0.width > 0 && $0.height > 0 }
    guard !usable.isEmpty else {
        throw .noUsableFormat(name: camera.name, offered: camera.offeredDescription)
    }
    let size: (width: Int, height: Int)
    if usable.contains(where: { $0.width == width && $0.height == height }) {
        size = (width, height)
    } else if let covering = usable.filter({ $0.width >= width && $0.height >= height })
        .min(by: { ($0.width * $0.height, $0.width) < ($1.width * $1.height, $1.width) })
    {
        size = (covering.width, covering.height)
    } else {
        let largest = usable.max(by: { ($0.width * $0.height, $0.width) < ($1.width * $1.height, $1.width) })!
        size = (largest.width, largest.height)
    }
    func rateRank(_ format: CameraFormat) -> Int {
        format.fps >= fps ? 0 : (format.fps == 0 ? 1 : 2)
    }
    func layoutRank(_ format: CameraFormat) -> Int {
        switch format.pixelFormat {
        case .i420: return 0
        case .nv12: return 1
        case .yuyv: return 2
        case .mjpeg: return 3
        }
    }
    let atSize = usable.filter { $0.width == size.width && $0.height == size.height }
    return atSize.min(by: { a, b in
        (rateRank(a), layoutRank(a), -a.fps) < (rateRank(b), layoutRank(b), -b.fps)
    })!
}
