extension VideoFrame {
    /// A resized copy: area averaging when shrinking (no aliasing, used for the simulcast low layer and the
    /// terminal), bilinear when growing. Returns `self` unchanged when the size already matches.
    public func scaled(width newWidth: Int, height newHeight: Int) -> VideoFrame {
        precondition(newWidth > 0 && newHeight > 0, "target size must be positive")
        if newWidth == width, newHeight == height { return self }
        let newChromaWidth = (newWidth + 1) / 2
        let newChromaHeight = (newHeight + 1) / 2
        return VideoFrame(
            width: newWidth, height: newHeight,
            y: Self.resample(y, width, height, newWidth, newHeight),
            u: Self.resample(u, chromaWidth, chromaHeight, newChromaWidth, newChromaHeight),
            v: Self.resample(v, chromaWidth, chromaHeight, newChromaWidth, newChromaHeight),
            timestampMicros: timestampMicros)
    }

    /// Resamples one plane.
    static func resample(_ plane: [UInt8], _ width: Int, _ height: Int, _ newWidth: Int, _ newHeight: Int) -> [UInt8] {
        if width == newWidth * 2, height == newHeight * 2 {
            return halve(plane, newWidth, newHeight)
        }
        if newWidth <= width, newHeight <= height {
            return boxDownscale(plane, width, height, newWidth, newHeight)
        }
        return bilinear(plane, width, height, newWidth, newHeight)
    }

    /// Exact halving (the simulcast low layers): the rounded mean of each 2x2 block, same result as the box path.
    /// Sixteen outputs at a time: a sender halves every camera frame once or twice, 30 times a second.
    private static func halve(_ plane: [UInt8], _ newWidth: Int, _ newHeight: Int) -> [UInt8] {
        let width = newWidth * 2
        return [UInt8](unsafeUninitializedCapacity: newWidth * newHeight) { out, count in
            plane.withUnsafeBufferPointer { source in
                for row in 0..<newHeight {
                    let top = source.baseAddress! + 2 * row * width
                    let bottom = top + width
                    let target = out.baseAddress! + row * newWidth
                    var column = 0
                    while column + 16 <= newWidth {
                        let upper = SIMD32<UInt16>(
                            truncatingIfNeeded: UnsafeRawPointer(top + 2 * column)
                                .loadUnaligned(as: SIMD32<UInt8>.self))
                        let lower = SIMD32<UInt16>(
                            truncatingIfNeeded: UnsafeRawPointer(bottom + 2 * column)
                                .loadUnaligned(as: SIMD32<UInt8>.self))
                        let pairs = upper &+ lower
                        let means = (pairs.evenHalf &+ pairs.oddHalf &+ 2) &>> 2
                        UnsafeMutableRawPointer(target + column)
                            .storeBytes(of: SIMD16<UInt8>(truncatingIfNeeded: means), as: SIMD16<UInt8>.self)
                        column += 16
                    }
                    while column < newWidth {
                        let sum =
                            UInt16(top[2 * column]) &+ UInt16(top[2 * column + 1])
                            &+ UInt16(bottom[2 * column]) &+ UInt16(bottom[2 * column + 1])
                        target[column] = UInt8(truncatingIfNeeded: (sum &+ 2) >> 2)
                        column += 1
                    }
                }
            }
            count = newWidth * newHeight
        }
    }

    /// Each output sample is the mean of the source rectangle it covers (integer edges), so every source sample
    /// is read about once: cheap enough for every frame.
    private static func boxDownscale(
        _ plane: [UInt8], _ width: Int, _ height: Int, _ newWidth: Int, _ newHeight: Int
    ) -> [UInt8] {
        let columnStarts = (0...newWidth).map { $0 * width / newWidth }
        let rowStarts = (0...newHeight).map { $0 * height / newHeight }
        return [UInt8](unsafeUninitializedCapacity: newWidth * newHeight) { out, count in
            plane.withUnsafeBufferPointer { source in
                columnStarts.withUnsafeBufferPointer { columns in
                    var sums = [UInt32](repeating: 0, count: width)
                    sums.withUnsafeMutableBufferPointer { sums in
                        for row in 0..<newHeight {
                            let top = rowStarts[row]
                            let bottom = max(top + 1, rowStarts[row + 1])
                            // Column sums over the rows of this output row, then one pass across.
                            for x in 0..<width { sums[x] = UInt32(source[top * width + x]) }
                            if bottom - top > 1 {
                                for sourceRow in (top + 1)..<bottom {
                                    let base = sourceRow * width
                                    for x in 0..<width { sums[x] &+= UInt32(source[base + x]) }
                                }
                            }
                            let rows = UInt32(bottom - top)
                            for column in 0..<newWidth {
                                let left = columns[column]
                                let right = max(left + 1, columns[column + 1])
                                var total: UInt32 = 0
                                for x in left..<right { total &+= sums[x] }
                                let area = rows * UInt32(right - left)
                                out[row * newWidth + column] = UInt8((total + area / 2) / area)
                            }
                        }
                    }
                }
            }
            count = newWidth * newHeight
        }
    }

    /// Bilinear interpolation with 8-bit fixed-point weights, sample centres aligned.
    private static func bilinear(
        _ plane: [UInt8], _ width: Int, _ height: Int, _ newWidth: Int, _ newHeight: Int
    ) -> [UInt8] {
        func taps(_ outSize: Int, _ inSize: Int) -> [(Int, Int, Int)] {
            (0..<outSize).map { index in
                let position = max(0, (Double(index) + 0.5) * Double(inSize) / Double(outSize) - 0.5)
                let first = min(inSize - 1, Int(position))
                let second = min(inSize - 1, first + 1)
                return (first, second, Int((position - Double(first)) * 256))
            }
        }
        let xTaps = taps(newWidth, width)
        let yTaps = taps(newHeight, height)
        return [UInt8](unsafeUninitializedCapacity: newWidth * newHeight) { out, count in
            plane.withUnsafeBufferPointer { source in
                for row in 0..<newHeight {
                    let (y0, y1, fy) = yTaps[row]
                    for column in 0..<newWidth {
                        let (x0, x1, fx) = xTaps[column]
                        let top = Int(source[y0 * width + x0]) * (256 - fx) + Int(source[y0 * width + x1]) * fx
                        let bottom = Int(source[y1 * width + x0]) * (256 - fx) + Int(source[y1 * width + x1]) * fx
                        out[row * newWidth + column] = UInt8((top * (256 - fy) + bottom * fy + 32768) >> 16)
                    }
                }
            }
            count = newWidth * newHeight
        }
    }
}
