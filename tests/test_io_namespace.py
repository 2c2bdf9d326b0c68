"""mx.recordio and mx.image are mx_io's modules under MXNet's names."""
import mx
from mx_io import image, recordio


def test_recordio_namespace():
    assert mx.recordio.MXRecordIO is recordio.MXRecordIO
    assert mx.recordio.MXIndexedRecordIO is recordio.MXIndexedRecordIO
    assert mx.recordio.IRHeader is recordio.IRHeader
    assert mx.recordio.pack_img is recordio.pack_img


def test_image_namespace():
    assert mx.image.imdecode is image.imdecode
    assert mx.image.center_crop is image.center_crop
    assert mx.image.ImageIter is image.ImageIter
    assert mx.image.CreateAugmenter is image.CreateAugmenter
    assert mx.image.HueJitterAug is image.HueJitterAug
